package rmqd.it;

import java.lang.reflect.Method;

/**
 * The few API spots where rocketmq-client 4.9.x and 5.x differ in package (not in behaviour), bridged by reflection
 * so one source tree compiles against both. Example: MessageModel moved from common.protocol.heartbeat (4.x)
 * to remoting.protocol.heartbeat (5.x).
 */
final class Compat {
    private Compat() {
    }

    /** Calls target.setMessageModel(MessageModel.valueOf(name)) whatever package MessageModel lives in. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static void setMessageModel(Object target, String name) throws ReflectiveOperationException {
        for (Method m : target.getClass().getMethods()) {
            if (m.getName().equals("setMessageModel") && m.getParameterCount() == 1 && m.getParameterTypes()[0].isEnum()) {
                m.invoke(target, Enum.valueOf((Class<? extends Enum>) m.getParameterTypes()[0], name));
                return;
            }
        }
        throw new NoSuchMethodException(target.getClass().getName() + ".setMessageModel");
    }

    /** Calls target.name(value) for a boolean setter only some client versions have. */
    static void call(Object target, String name, boolean value) throws ReflectiveOperationException {
        target.getClass().getMethod(name, boolean.class).invoke(target, value);
    }
}
